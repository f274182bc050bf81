"""The ground floor both programs stand on: errors, logs, files, host facts, text and time."""
