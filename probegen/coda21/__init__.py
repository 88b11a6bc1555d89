"""CoDA21 context-definition alignment: group generation, context choice and dataset files."""
