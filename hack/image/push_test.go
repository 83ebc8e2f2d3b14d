package main

import (
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The push the README documents — extract the tarball, `crane push DIR REF`
// — done as crane v0.22.1's push does it (an OCI layout directory whose one
// index.json entry is an index: remote.WriteIndex), to a registry on
// loopback; the registry then serves the same index digest and both
// platforms.
func TestPushExtractedLayout(t *testing.T) {
	results, _ := buildTiny(t, "1700000000")
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	r := results[1] // tiny
	dir := t.TempDir()
	extract(t, r.Path, dir)

	l, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("crane push would refuse this layout: %+v", m.Manifests)
	}
	idx, err := l.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(u.Host+"/you/tiny:v9.9.9", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != r.Digest {
		t.Errorf("registry serves %s, hack/image printed %s", d, r.Digest)
	}
	gm, err := got.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range gm.Manifests {
		img, err := got.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := img.Layers(); err != nil {
			t.Fatal(err)
		}
		platforms = append(platforms, d.Platform.String())
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("pushed platforms %v", platforms)
	}
}
