package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// nonRootUser is the numeric user of Ebbflow's images (distroless'
	// nonroot), numeric so a kubelet can check runAsNonRoot without a
	// runAsUser in the pod.
	nonRootUser = "65532:65532"
	// pauseName is the image that gets upstream pause's user instead.
	pauseName = "pause"
	pauseUser = "65535:65535"
	pathEnv   = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// imageConfig is the runtime configuration of image name.
func imageConfig(name string, labels map[string]string) v1.Config {
	user := nonRootUser
	if name == pauseName {
		user = pauseUser
	}
	return v1.Config{
		User:       user,
		Entrypoint: []string{"/" + name},
		WorkingDir: "/",
		Env:        []string{pathEnv},
		Labels:     labels,
	}
}

// ociLabels are the OCI annotation keys the images carry as labels and the
// index as annotations.
func ociLabels(src source) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.revision": src.Revision,
		"org.opencontainers.image.version":  src.Version,
		"org.opencontainers.image.created":  src.Created.Format(time.RFC3339),
	}
}

// binaryLayer is a gzip-compressed OCI layer holding only the file at
// /name: mode 0755, owned by 0:0, modified at mtime. Its bytes depend only
// on the binary, the name and mtime.
func binaryLayer(binPath, name string, mtime time.Time) (v1.Layer, error) {
	f, err := os.Open(binPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Size:     st.Size(),
		ModTime:  mtime,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return nil, fmt.Errorf("layer of %s: %w", name, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// platformImage is the single-layer image of binPath for p.
func platformImage(binPath, name string, p platform, src source) (v1.Image, error) {
	layer, err := binaryLayer(binPath, name, src.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: src.Created}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "hack/image: COPY " + name + " /" + name, Comment: "static Go binary"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Arch, p.Variant
	cf.Created = created
	cf.Config = imageConfig(name, ociLabels(src))
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// imageIndex is the raw OCI image index over the per-platform images, in
// the order of platforms, annotated with the OCI labels. (Written here rather
// than with mutate.AppendManifests, which adds an artifactType to each
// descriptor that image manifests should not have.)
func imageIndex(images []v1.Image, platforms []platform, src source) ([]byte, error) {
	im := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Annotations: ociLabels(src)}
	for i, img := range images {
		p := platforms[i]
		d, err := partial.Descriptor(img)
		if err != nil {
			return nil, err
		}
		im.Manifests = append(im.Manifests, v1.Descriptor{
			MediaType: d.MediaType, Digest: d.Digest, Size: d.Size,
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch, Variant: p.Variant},
		})
	}
	return json.Marshal(im)
}
