# files of src/infer (owned by the infer component)
