from perfkit.cli import main

raise SystemExit(main())
