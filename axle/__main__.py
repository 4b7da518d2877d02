import sys

from axle.tools.cli import main

sys.exit(main())
