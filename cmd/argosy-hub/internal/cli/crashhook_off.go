//go:build !argosy_testhooks

package cli

import "github.com/twmb/franz-go/pkg/kgo"

// withCrash is f: production binaries carry no fault hook.
func withCrash(f func(string) []kgo.Opt) func(string) []kgo.Opt { return f }
