package prom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestTransportRereadsCredentialFiles(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		user, pass, _ := r.BasicAuth()
		seen = append(seen, user+":"+pass+"|"+r.Header.Get("Authorization")+"|"+r.Header.Get("X-Scope-Orgid"))
		mu.Unlock()
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()

	tests := []struct {
		name  string
		opts  func(file string) TransportOptions
		first string
		then  string
	}{
		{
			name: "basic auth password file",
			opts: func(f string) TransportOptions {
				return TransportOptions{BasicAuthUsername: "ebb", BasicAuthPasswordFile: f, Headers: map[string][]string{"X-Scope-Orgid": {"tenant"}}}
			},
			first: "ebb:one|", then: "ebb:two|",
		},
		{
			name:  "bearer token file",
			opts:  func(f string) TransportOptions { return TransportOptions{TokenFile: f} },
			first: "Bearer one", then: "Bearer two",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(file, []byte("one\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			hc, err := NewHTTPTransportClient(tt.opts(file))
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewHTTPClient(srv.URL, hc, VerbGET)
			if err != nil {
				t.Fatal(err)
			}
			query := func() string {
				if _, err := c.Query(context.Background(), "up"); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				return seen[len(seen)-1]
			}
			if got := query(); !strings.Contains(got, tt.first) {
				t.Fatalf("first request carried %q, want %q", got, tt.first)
			}
			if err := os.WriteFile(file, []byte("two\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := query(); !strings.Contains(got, tt.then) {
				t.Fatalf("after rotation request carried %q, want %q", got, tt.then)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(seen[0], "|tenant") {
		t.Errorf("custom header missing: %q", seen[0])
	}
}

func TestTransportValidation(t *testing.T) {
	bad := []TransportOptions{
		{InCluster: true, AuthConfig: "x"},
		{InCluster: true, BasicAuthUsername: "u", BasicAuthPasswordFile: "p"},
		{ClientCertFile: "c"},
		{TokenFile: "t", BasicAuthUsername: "u", BasicAuthPasswordFile: "p"},
		{BasicAuthUsername: "u"},
	}
	for i, o := range bad {
		if errs := o.Validate(); len(errs) == 0 {
			t.Errorf("case %d: want validation error for %+v", i, o)
		}
	}
	// Every combination prometheus-adapter accepts.
	for _, o := range []TransportOptions{
		{BasicAuthUsername: "u", BasicAuthPasswordFile: "p"},
		{InCluster: true, TokenFile: "t"},
		{InCluster: true, CAFile: "ca"},
		{InCluster: true, CAFile: "ca", ClientCertFile: "c", ClientKeyFile: "k", TokenFile: "t"},
		{AuthConfig: "kc", TokenFile: "t"},
		{AuthConfig: "kc", CAFile: "ca"},
		{AuthConfig: "kc", ClientCertFile: "c", ClientKeyFile: "k"},
	} {
		if errs := o.Validate(); len(errs) != 0 {
			t.Errorf("%+v rejected: %v", o, errs)
		}
	}
	if got := (TransportOptions{InCluster: true, CAFile: "ca"}).Ignored(); len(got) != 1 || !strings.Contains(got[0], "--prometheus-auth-incluster is ignored") {
		t.Errorf("Ignored() = %v, want the in-cluster note", got)
	}
}

func TestMissingPasswordFileErrorHasNoSecret(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	hc, err := NewHTTPTransportClient(TransportOptions{BasicAuthUsername: "ebb", BasicAuthPasswordFile: filepath.Join(t.TempDir(), "absent")})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewHTTPClient(srv.URL, hc, VerbGET)
	_, err = c.Query(context.Background(), "up")
	if err == nil {
		t.Fatal("want error for unreadable password file")
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := ParseHeaders([]string{"x-scope-orgid=a", "X-Scope-OrgID=b"})
	if err != nil || len(h["X-Scope-Orgid"]) != 2 {
		t.Fatalf("headers %v, err %v", h, err)
	}
	if _, err := ParseHeaders([]string{"novalue"}); err == nil {
		t.Error("want error")
	}
}
