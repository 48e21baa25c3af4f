from advisor.fastpath import main

main()
