"""Reading: a table resolved for one query (``resolved``), the planner and its slicing of
directories into splits (driver), which events a snapshot sees and the reader of one split
(executor), and the routes a snapshot allows through an engine's own ORC reader. A scan never
talks to the transaction store: it receives a resolved table."""
