package openai

// needsModel reports whether a request's model field m is missing where one is required: always,
// but in team mode (optional: core.Service.ModelOptional) the router picks the caller's booked
// lane, else a free one, for an empty name, so a missing one is set to "" instead.
func needsModel(m **string, optional bool) bool {
	if *m == nil && optional {
		*m = new(string)
	}
	return *m == nil || (**m == "" && !optional)
}
