"""Commands answered before click loads, for the paths people and agents run most: `git lanes sync` with
nothing to replay (the agent hooks have their own face, `git_lanes.hooks`). Each hands anything it does not
handle exactly to the click CLI, which then runs as if this face did not exist."""
