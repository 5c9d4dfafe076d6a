"""Study builders: the logic behind each notebook, as functions returning datasets."""
