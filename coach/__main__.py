from coach.cli import main

main()
