-- Prints its arguments: checks that `tilelab run` passes them through.
print("args: " .. table.concat(arg, " "))
