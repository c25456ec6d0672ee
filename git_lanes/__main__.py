from git_lanes.cli import main

main()
