module github.com/bitt-dev/bitt/bindings/go/example

go 1.23

require github.com/bitt-dev/bitt/bindings/go v0.0.0

replace github.com/bitt-dev/bitt/bindings/go => ../
