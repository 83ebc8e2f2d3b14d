// Package imagelayout reads the OCI image layout tarballs hack/image writes
// (oci-layout, index.json naming one image index, blobs/sha256/…): the
// digests they hold and the files of their single-layer images. It is used
// by hack/image's reproducibility check and by test/imagetest.
package imagelayout

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Layout is one tarball read into memory, every blob checked against its
// digest.
type Layout struct {
	index v1.Hash           // the image index index.json names
	blobs map[string][]byte // by digest ("sha256:…")
}

// Entry is one digest of a layout and what it is: "index", or
// "OS/ARCH[/VARIANT] manifest", "… config", "… layer N".
type Entry struct {
	Role   string
	Digest v1.Hash
}

// Read reads the tarball at p. It fails unless index.json names exactly one
// descriptor and every blob's content has the digest its name says.
func Read(p string) (*Layout, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &Layout{blobs: map[string][]byte{}}
	var indexJSON []byte
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", p, h.Name, err)
		}
		switch name := path.Clean(h.Name); {
		case name == "index.json":
			indexJSON = data
		case strings.HasPrefix(name, "blobs/sha256/"):
			sum := strings.TrimPrefix(name, "blobs/sha256/")
			if got := sha256Hex(data); got != sum {
				return nil, fmt.Errorf("%s: blob %s has digest sha256:%s", p, sum, got)
			}
			l.blobs["sha256:"+sum] = data
		}
	}
	if indexJSON == nil {
		return nil, fmt.Errorf("%s: no index.json", p)
	}
	top, err := v1.ParseIndexManifest(bytes.NewReader(indexJSON))
	if err != nil {
		return nil, fmt.Errorf("%s: index.json: %w", p, err)
	}
	if len(top.Manifests) != 1 {
		return nil, fmt.Errorf("%s: index.json names %d descriptors, want 1", p, len(top.Manifests))
	}
	l.index = top.Manifests[0].Digest
	return l, nil
}

// Entries lists every digest of the layout in a fixed order: the image
// index, then for each of its platforms (in the index's order) the manifest,
// the config and each layer.
func (l *Layout) Entries() ([]Entry, error) {
	idx, err := l.imageIndex()
	if err != nil {
		return nil, err
	}
	entries := []Entry{{Role: "index", Digest: l.index}}
	for _, d := range idx.Manifests {
		p := platformString(d.Platform)
		m, err := l.manifest(d.Digest)
		if err != nil {
			return nil, err
		}
		entries = append(entries, Entry{p + " manifest", d.Digest}, Entry{p + " config", m.Config.Digest})
		for i, layer := range m.Layers {
			entries = append(entries, Entry{fmt.Sprintf("%s layer %d", p, i), layer.Digest})
		}
	}
	return entries, nil
}

// File returns the regular file name (e.g. "/ebbflow") of the image for
// platform ("linux/arm64"), whose manifest must have exactly one layer.
func (l *Layout) File(platform, name string) ([]byte, error) {
	idx, err := l.imageIndex()
	if err != nil {
		return nil, err
	}
	for _, d := range idx.Manifests {
		if platformString(d.Platform) != platform {
			continue
		}
		m, err := l.manifest(d.Digest)
		if err != nil {
			return nil, err
		}
		if len(m.Layers) != 1 {
			return nil, fmt.Errorf("%s image has %d layers, want 1", platform, len(m.Layers))
		}
		return l.layerFile(m.Layers[0].Digest, name)
	}
	return nil, fmt.Errorf("no %s image in the index", platform)
}

// Blob returns the blob digest.
func (l *Layout) Blob(digest v1.Hash) ([]byte, error) { return l.blob(digest) }

// LayerFile is one entry of a layer: its tar header's fields and content.
type LayerFile struct {
	Name     string
	Typeflag byte
	Mode     int64
	UID, GID int
	ModTime  time.Time
	Data     []byte
}

// LayerFiles returns every entry of the gzip tar layer digest, in order.
func (l *Layout) LayerFiles(digest v1.Hash) ([]LayerFile, error) {
	data, err := l.blob(digest)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", digest, err)
	}
	var files []LayerFile
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", digest, err)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %s: %w", digest, h.Name, err)
		}
		files = append(files, LayerFile{Name: h.Name, Typeflag: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid,
			ModTime: h.ModTime.UTC(), Data: content})
	}
}

// layerFile reads the regular file name from the gzip tar layer digest.
func (l *Layout) layerFile(digest v1.Hash, name string) ([]byte, error) {
	files, err := l.LayerFiles(digest)
	if err != nil {
		return nil, err
	}
	want := strings.TrimPrefix(path.Clean("/"+name), "/")
	for _, f := range files {
		if strings.TrimPrefix(path.Clean("/"+f.Name), "/") == want && f.Typeflag == tar.TypeReg {
			return f.Data, nil
		}
	}
	return nil, fmt.Errorf("layer %s has no file %s", digest, name)
}

func (l *Layout) imageIndex() (*v1.IndexManifest, error) {
	data, err := l.blob(l.index)
	if err != nil {
		return nil, err
	}
	return v1.ParseIndexManifest(bytes.NewReader(data))
}

func (l *Layout) manifest(digest v1.Hash) (*v1.Manifest, error) {
	data, err := l.blob(digest)
	if err != nil {
		return nil, err
	}
	return v1.ParseManifest(bytes.NewReader(data))
}

func (l *Layout) blob(digest v1.Hash) ([]byte, error) {
	data, ok := l.blobs[digest.String()]
	if !ok {
		return nil, fmt.Errorf("blob %s is missing", digest)
	}
	return data, nil
}

func platformString(p *v1.Platform) string {
	if p == nil {
		return "unknown"
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
