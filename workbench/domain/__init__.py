"""What a recipe is: recipes, variants, the target names, results and their quantities, SLAs."""
