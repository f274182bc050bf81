"""Every step a server recorded since the arm: GitHub's repository activity, a bare
repository's journal of ref updates, and which one a remote has."""
