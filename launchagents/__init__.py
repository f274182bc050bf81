"""The templates of the macOS LaunchAgent and the Linux systemd units (data only)."""
