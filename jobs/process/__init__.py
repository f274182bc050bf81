"""Starting programs and making sure nothing they started outlives the run: the recipe runner,
process trees, the run's scope and where `git` and `just` are found."""
