# Documentation checks (torch-free: they run in every build, the sanitizer ones included).
# DocsLinksResolve: every relative Markdown link and #anchor in the repository, and every document
# a code comment cites, resolves (scripts/check-links.sh); docs/configuration.md must be present.
add_test(NAME DocsLinksResolve COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check-links.sh)
# The checker itself: a tree with broken links fails, the repaired tree passes.
add_test(NAME DocsLinksCheckerCatchesBrokenLinks
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_links_selftest.sh ${PROJECT_SOURCE_DIR}/scripts/check-links.sh)
