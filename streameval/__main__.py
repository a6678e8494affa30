from streameval.commands.main import main

raise SystemExit(main())
