from voxarena.orchestrator.cli.app import main

main()
