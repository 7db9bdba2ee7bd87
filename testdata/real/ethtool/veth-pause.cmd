["ethtool", "-a", "v0"]
