# files of src/report (owned by the report component)
