"""Values and reverse-mode gradients at one point or over a grid of points, verified by finite
differences: the step policy, the check at a point, column replays, sweeps and Hessians."""
