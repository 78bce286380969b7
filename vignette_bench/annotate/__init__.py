"""Human validation of renders and pairs: an offline annotation page and agreement scores (docs/annotate.md)."""
