package auction

// resolveModel checks `model` and `model_size` and puts the model in the
// canonical spec, where the RFQ (and every provider) sees it. A spec
// without them leaves Model nil, so its CID is the one it always had.
func (s *JobSpec) resolveModel(sp *specProblems, c *jobSpecCanon) {
	switch {
	case s.Model == "" && s.ModelSize == "":
		return
	case s.Model == "":
		sp.add("model_size", "set without model: name the model (a CID, or name@sha256:<64 hex>) whose size this is")
		return
	case s.ModelSize == "":
		sp.add("model_size", "missing: the size of model %s on disk, e.g. 16GB, so providers without it can be charged its download", s.Model)
	}
	id, err := ParseModelID(s.Model)
	if err != nil {
		sp.add("model", "%v", err)
	}
	var size uint64
	if s.ModelSize != "" {
		size = jobResolveSize(sp, "model_size", s.ModelSize, 1<<20, MaxModelSizeMiB)
	}
	if err == nil && size > 0 {
		c.Model = &ModelRef{ID: id, SizeMiB: size}
	}
}
