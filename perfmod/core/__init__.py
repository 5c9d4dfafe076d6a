"""Infrastructure every layer uses: datasets and provenance (:mod:`.io`), where data live
(:mod:`.paths`), the papers' transcribed tables (:mod:`.paperdata`), argument checks
(:mod:`.checks`), the package version (:mod:`.version`)."""
