from advisor.entry import main

main()
