from vignette_bench.cli import main

raise SystemExit(main())
