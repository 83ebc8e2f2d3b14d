package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the index.json entry: containerd's import (`ctr images
// import`, containerd 1.6 and later) names the image from the first; the
// second is the OCI layout's own reference (the tag), read by tools such as
// skopeo and crane.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// blob is one file under blobs/sha256/.
type blob struct {
	digest v1.Hash
	open   func() (io.ReadCloser, error)
	size   int64
}

// writeLayout writes the image index rawIndex over images as an OCI image
// layout tarball at path, its index.json pointing at the index annotated with ref (REPOSITORY/NAME:TAG) and
// tag. Entries are sorted, owned by 0:0 and dated mtime, so the file's bytes
// depend only on the images, ref and mtime. The file is replaced atomically.
func writeLayout(path string, rawIndex []byte, images []v1.Image, ref, tag string, mtime time.Time) error {
	blobs, err := indexBlobs(rawIndex, images)
	if err != nil {
		return err
	}
	digest, size, err := v1.SHA256(bytesReader(rawIndex))
	if err != nil {
		return err
	}
	desc := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: digest, Size: size,
		Annotations: map[string]string{annotationContainerdName: ref, annotationRefName: tag}}
	indexJSON, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{desc},
	})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: a no-op
	tw := tar.NewWriter(tmp)
	writeErr := tmp.Chmod(0o644) // CreateTemp makes 0600
	if writeErr == nil {
		writeErr = writeEntries(tw, indexJSON, blobs, mtime)
	}
	if err := tw.Close(); writeErr == nil {
		writeErr = err
	}
	if err := tmp.Close(); writeErr == nil {
		writeErr = err
	}
	if writeErr != nil {
		return fmt.Errorf("write %s: %w", path, writeErr)
	}
	return os.Rename(tmp.Name(), path)
}

func writeEntries(tw *tar.Writer, indexJSON []byte, blobs []blob, mtime time.Time) error {
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	bytesFile := func(name string, data []byte) error { return file(name, int64(len(data)), bytesReader(data)) }

	if err := dir("blobs/"); err != nil {
		return err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return err
	}
	for _, b := range blobs {
		rc, err := b.open()
		if err != nil {
			return err
		}
		err = file("blobs/sha256/"+b.digest.Hex, b.size, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("blob %s: %w", b.digest, err)
		}
	}
	if err := bytesFile("index.json", indexJSON); err != nil {
		return err
	}
	return bytesFile("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
}

// indexBlobs lists every blob (the index manifest, and each image's
// manifest, config and layers) once, sorted by digest.
func indexBlobs(rawIndex []byte, images []v1.Image) ([]blob, error) {
	seen := map[v1.Hash]blob{}
	add := func(raw []byte) {
		h, n, _ := v1.SHA256(bytesReader(raw))
		seen[h] = blob{digest: h, size: n, open: func() (io.ReadCloser, error) { return io.NopCloser(bytesReader(raw)), nil }}
	}
	add(rawIndex)
	for _, img := range images {
		for _, f := range []func() ([]byte, error){img.RawManifest, img.RawConfigFile} {
			raw, err := f()
			if err != nil {
				return nil, err
			}
			add(raw)
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, err
		}
		for _, l := range layers {
			h, err := l.Digest()
			if err != nil {
				return nil, err
			}
			n, err := l.Size()
			if err != nil {
				return nil, err
			}
			seen[h] = blob{digest: h, size: n, open: l.Compressed}
		}
	}
	out := make([]blob, 0, len(seen))
	for _, b := range seen {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b blob) int {
		if a.digest.Hex < b.digest.Hex {
			return -1
		}
		if a.digest.Hex > b.digest.Hex {
			return 1
		}
		return 0
	})
	return out, nil
}
