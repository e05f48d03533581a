"""What both suites share: the machine facts a report opens with, the run sizes, free ports,
stopping a child process, and the plot's frame. Nothing here measures anything."""
