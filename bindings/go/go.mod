module github.com/bitt-dev/bitt/bindings/go

go 1.23
