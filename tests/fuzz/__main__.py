"""`python -m tests.fuzz --profile long --programs 20000` (see cli.py)."""
if __name__ == "__main__":
    from .cli import main
    main()
