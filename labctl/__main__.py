from labctl.cli import main

main()
