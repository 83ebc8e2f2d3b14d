// Package buildinfo reports which version and source revision a binary was
// built from. Release builds (hack/image, `make image`) set Version and
// Revision at link time:
//
//	go build -ldflags "-X github.com/ebbflow/ebbflow/internal/buildinfo.Version=v0.1.0 \
//	  -X github.com/ebbflow/ebbflow/internal/buildinfo.Revision=$(git rev-parse HEAD)"
//
// Other builds fall back to what the Go toolchain recorded (the module
// version and, when built with -buildvcs, the VCS revision).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/spf13/cobra"
)

// Link-time values; set only with -ldflags -X, never assigned by code.
var (
	// Version is the release version, e.g. v0.1.0.
	Version string
	// Revision is the full commit hash of the source.
	Revision string
)

// Unknown stands for a version or revision nobody recorded.
const Unknown = "unknown"

// Info is what a binary knows about its build. Version and Revision are never
// empty: Unknown when neither the linker nor the toolchain recorded them.
type Info struct {
	Version   string
	Revision  string
	Modified  bool // the working tree had uncommitted changes (toolchain data only)
	GoVersion string
	Platform  string // GOOS/GOARCH
}

// Get returns the build information of the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Revision, bi)
}

// resolve prefers the link-time values and fills what they leave empty from
// bi (which may be nil).
func resolve(version, revision string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Revision: revision, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					info.Revision = s.Value
				case "vcs.modified":
					info.Modified, _ = strconv.ParseBool(s.Value)
				}
			}
		}
	}
	if info.Version == "" {
		info.Version = Unknown
	}
	if info.Revision == "" {
		info.Revision = Unknown
	}
	return info
}

// String is the one-line form --version prints after the command's name:
// "v0.1.0 (revision 0123abc..., go1.26.8, linux/amd64)".
func (i Info) String() string {
	rev := i.Revision
	if i.Modified {
		rev += "-dirty"
	}
	return fmt.Sprintf("%s (revision %s, %s, %s)", i.Version, rev, i.GoVersion, i.Platform)
}

// AddVersionFlag gives cmd a --version flag (no shorthand: -v would clash
// with klog's --v in users' minds) that prints "NAME version INFO" to the
// command's output and exits 0 without running the command.
func AddVersionFlag(cmd *cobra.Command) {
	cmd.Version = Get().String()
	cmd.Flags().Bool("version", false, "Print the version and source revision, then exit")
}
