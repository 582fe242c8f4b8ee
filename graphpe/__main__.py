"""``python -m graphpe`` (and ``torchrun ... -m graphpe``): the ``graphpe`` command line."""

from graphpe.cli import main

if __name__ == "__main__":
    main()
