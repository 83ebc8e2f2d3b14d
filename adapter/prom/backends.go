package prom

import (
	"errors"
	"fmt"
	"maps"
)

// ErrUnknownBackend is returned for a backend name no client was given for; test
// with errors.Is. Rule files are checked against the backends at load, so it means
// a programming error rather than bad input.
var ErrUnknownBackend = errors.New("unknown prometheus backend")

// Backends are the clients of one adapter by backend name; the default backend
// (--prometheus-url) has the name "".
type Backends map[string]Client

// WithDefault returns a copy of named with def as the default backend.
func WithDefault(def Client, named Backends) Backends {
	out := make(Backends, len(named)+1)
	maps.Copy(out, named)
	out[""] = def
	return out
}

// For returns the client of the named backend ("" for the default).
func (b Backends) For(name string) (Client, error) {
	if c, ok := b[name]; ok && c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownBackend, name)
}
