from tabmem.cli import main

if __name__ == "__main__":  # spawned worker processes import this module without running the CLI
    main()
