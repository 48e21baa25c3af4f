import sys

from conformance.vllm import main

sys.exit(main(sys.argv[1:]))
