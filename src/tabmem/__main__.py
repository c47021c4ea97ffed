from tabmem.cli import main

main()
