import sys

from engine.cli.commands import main

sys.exit(main())
