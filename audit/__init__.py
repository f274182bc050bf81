"""loop-pi-audit: snapshot remotes when a run starts and judge every change at closeout."""
