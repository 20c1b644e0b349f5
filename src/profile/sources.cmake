# files of src/profile (owned by the profile component)
