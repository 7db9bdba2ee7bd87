["ethtool", "-g", "rf-none"]
