package rulefile

import (
	"fmt"
	"os"
)

// LoadFile reads and parses the rule file at path; see Load. Errors name the path and
// wrap LoadErrors (for problems in the file) or the error of reading it.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rule file: %w", err)
	}
	cfg, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("load rule file %s: %w", path, err)
	}
	return cfg, nil
}
