"""What lets the master agent act unasked: intentions it keeps for later, the digest of what
changed since it last looked (with the dots it connects), and the rules for when it may
speak first."""
