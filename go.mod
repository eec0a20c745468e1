module github.com/consentkit/consentkit

go 1.26

require github.com/google/go-cmp v0.7.0

require github.com/mattn/go-sqlite3 v1.14.53 // indirect
