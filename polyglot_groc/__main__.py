from polyglot_groc.cli import main

main()
