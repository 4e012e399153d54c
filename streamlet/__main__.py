"""`python -m streamlet ...`: the same as the `streamlet` console script."""

from streamlet.cli import main

raise SystemExit(main())
