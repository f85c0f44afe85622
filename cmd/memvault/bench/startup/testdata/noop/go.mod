module noop

go 1.22
