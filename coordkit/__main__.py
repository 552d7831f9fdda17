from coordkit.cli import main

raise SystemExit(main())
