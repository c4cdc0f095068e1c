package provider

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"

	"github.com/idlegrid/idlegrid/auction"
)

// maxModelsDirEntries bounds how many names one scan of the models
// directory reads: the record lists at most auction.MaxHeldModels, and a
// directory full of other files must not make every publish slow.
const maxModelsDirEntries = 1024

// maxHeldModelsBytes bounds the model IDs' text in one record (32 IDs of
// a CID or a name and digest fit), so a directory of long names cannot
// push a record of many GPUs past auction.MaxCapacitySize and stop it
// being published at all.
const maxHeldModelsBytes = 4 << 10

// heldModels lists the models this host holds on disk, for the capacity
// record: the configured IDs (provider.models) first, then each entry of
// the models directory (provider.models_dir) named by a model ID (a CID,
// or name@sha256:<hex>), canonical and unique, at most
// auction.MaxHeldModels. Names that are not model IDs are skipped: the
// directory may hold partial downloads and other files. The directory is
// read at each publish, so a model that lands there is advertised with
// the next record.
func heldModels(cfg OfferConfig, log *slog.Logger) []string {
	var out []string
	size := 0
	add := func(name string) {
		id, err := auction.ParseModelID(name)
		if err != nil || slices.Contains(out, id) {
			return
		}
		if len(out) == auction.MaxHeldModels || size+len(id) > maxHeldModelsBytes {
			log.Debug("more models held than a record lists; the rest are not advertised", "max", auction.MaxHeldModels)
			return
		}
		out = append(out, id)
		size += len(id)
	}
	for _, m := range cfg.Models {
		add(m) // validated at config load
	}
	if cfg.ModelsDir == "" {
		return out
	}
	names, err := readDirNames(cfg.ModelsDir, maxModelsDirEntries)
	if err != nil {
		log.Warn("reading the models directory", "dir", cfg.ModelsDir, "err", err)
	}
	slices.Sort(names) // the record does not depend on directory order
	for _, n := range names {
		if len(out) == auction.MaxHeldModels {
			break
		}
		add(n)
	}
	return out
}

// readDirNames reads at most n names from dir, unsorted.
func readDirNames(dir string, n int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}
