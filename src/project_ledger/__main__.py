from project_ledger.cli.main import main

main()
