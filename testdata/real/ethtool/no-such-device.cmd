["ethtool", "-a", "rf-none"]
